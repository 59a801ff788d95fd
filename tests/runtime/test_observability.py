"""The probe/metrics server and the Manager: codes before and after sync, reasons, shutdown."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import structlog

from kubesim.sim import KubeSim
from ocmkit.kube import CONFIGMAPS, LEASES, NAMESPACES, ROLE_BINDINGS, ROLES, KubeClient
from ocmkit.runtime import (
    Controller,
    HealthChecks,
    Informer,
    LeaderElectionSettings,
    LeaderElector,
    Manager,
    ManagerSettings,
    ObservabilityServer,
    WorkQueue,
    object_key,
    parse_bind_address,
    run_main,
)
from tests.conftest import eventually
from tests.runtime.conftest import NS, cm


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def probe(http: aiohttp.ClientSession, url: str, method: str = "GET") -> tuple[int, str]:
    async with http.request(method, url) as resp:
        return resp.status, await resp.text()


async def reason(http: aiohttp.ClientSession, base: str, check: str) -> str:
    """What the readiness check ``check`` says at its own path (its reason, or ``ok``)."""
    return (await probe(http, f"{base}/readyz/{check}"))[1]


def local_settings(**kw: Any) -> ManagerSettings:
    values: dict[str, Any] = {"bind_address": "127.0.0.1:0", "handle_signals": False}
    values.update(kw)
    return ManagerSettings(**values)


def quick_informer(client: KubeClient, name: str, **kw: Any) -> Informer:
    return Informer(client, CONFIGMAPS, NS, name=name, backoff_initial=0.05, backoff_max=0.3, **kw)


async def start_manager(manager: Manager) -> asyncio.Task[int]:
    task = asyncio.create_task(manager.run())

    async def serving() -> bool:
        return manager.observability._runner is not None or task.done()

    await eventually(serving, what="the probe server")
    assert not task.done(), "the manager ended early"
    return task


# -- the server alone -------------------------------------------------------------------


async def test_probe_bodies_and_codes(http: aiohttp.ClientSession) -> None:
    checks = HealthChecks()
    ready: list[str | None] = ["waiting for something"]
    checks.add_readiness("thing", lambda: ready[0])
    checks.add_liveness("heart", lambda: None)
    server = ObservabilityServer("127.0.0.1:0", checks=checks)
    await server.start()
    try:
        assert server.port != 0
        # As kube-apiserver: "ok" when passing, the lines with ?verbose or on failure,
        # its two built-in checks first.
        base = server.url
        assert await probe(http, f"{base}/livez") == (200, "ok")
        status, body = await probe(http, f"{base}/livez?verbose")
        assert (status, body) == (200, "[+]ping ok\n[+]log ok\n[+]heart ok\nlivez check passed\n")
        assert await probe(http, f"{base}/healthz") == (200, "ok")
        status, body = await probe(http, f"{base}/healthz?verbose=1")
        assert body == "[+]ping ok\n[+]log ok\n[+]heart ok\nhealthz check passed\n"
        # A failure is named, its reason withheld (the probe paths are public)...
        status, body = await probe(http, f"{base}/readyz")
        assert status == 500
        assert body == (
            "[+]ping ok\n[+]log ok\n[-]thing failed: reason withheld\nreadyz check failed\n"
        )
        # ... and given at the check's own path.
        assert await probe(http, f"{base}/readyz/thing") == (
            500,
            "internal server error: waiting for something\n",
        )
        assert await probe(http, f"{base}/livez/heart") == (200, "ok")
        assert await probe(http, f"{base}/healthz/ping") == (200, "ok")
        status, body = await probe(http, f"{base}/readyz?exclude=thing&exclude=other&verbose")
        assert (status, body) == (
            200,
            "[+]ping ok\n[+]log ok\n[+]thing excluded: ok\n"
            'warn: some health checks cannot be excluded: no matches for "other"\n'
            "readyz check passed\n",
        )
        ready[0] = None
        assert await probe(http, f"{base}/readyz") == (200, "ok")
        assert await probe(http, f"{base}/readyz/thing") == (200, "ok")
        # Any method, as Go's mux.
        for method in ("POST", "PUT", "DELETE"):
            assert await probe(http, f"{base}/readyz", method) == (200, "ok"), method

        def broken() -> str | None:
            raise RuntimeError("bug in a check")

        checks.add_liveness("broken", broken)
        status, body = await probe(http, f"{base}/livez")
        assert status == 500 and "[-]broken failed: reason withheld" in body
        status, body = await probe(http, f"{base}/livez/broken")
        assert status == 500
        assert body.startswith("internal server error: check raised RuntimeError('bug in a check'")
        WorkQueue("obs-queue").add("x")
        status, body = await probe(http, f"{server.url}/metrics")
        assert status == 200
        assert 'workqueue_depth{name="obs-queue"} 1.0' in body
    finally:
        await server.stop()


async def test_other_paths_list_what_is_served(http: aiohttp.ClientSession) -> None:
    """As a generic API server: the paths served, as JSON, at ``/`` and with every 404."""
    checks = HealthChecks()
    checks.add_readiness("informer works", lambda: None)
    checks.add_liveness("loop", lambda: None)
    server = ObservabilityServer("127.0.0.1:0", checks=checks)
    await server.start()
    expected = {
        "paths": [
            "/healthz",
            "/healthz/log",
            "/healthz/loop",
            "/healthz/ping",
            "/livez",
            "/livez/log",
            "/livez/loop",
            "/livez/ping",
            "/metrics",
            "/readyz",
            "/readyz/informer works",
            "/readyz/log",
            "/readyz/ping",
        ]
    }
    try:
        for path, code in (
            ("/", 200),
            ("/index.html", 200),
            ("/nothing", 404),
            ("/readyz/", 404),
            ("/livez/nothing", 404),
            ("/metrics/", 404),
        ):
            async with http.get(server.url + path) as resp:
                assert resp.status == code, path
                assert resp.headers["Content-Type"] == "application/json", path
                assert await resp.json() == expected, path
        # A check whose name has a space, at its own path.
        assert await probe(http, f"{server.url}/readyz/informer%20works") == (200, "ok")
        assert (await probe(http, f"{server.url}/healthz/informer%20works"))[0] == 404
    finally:
        await server.stop()


def test_bind_addresses() -> None:
    assert parse_bind_address("127.0.0.1:8443") == ("127.0.0.1", 8443)
    assert parse_bind_address(":9090") == ("0.0.0.0", 9090)
    assert parse_bind_address("[::1]:0") == ("::1", 0)
    for bad in ("8443", "host:http", "h:70000"):
        with pytest.raises(ValueError):
            parse_bind_address(bad)


async def test_port_in_use_is_a_clear_failure(http: aiohttp.ClientSession) -> None:
    first = ObservabilityServer("127.0.0.1:0")
    await first.start()
    try:
        manager = Manager("clash", settings=local_settings(bind_address=f"127.0.0.1:{first.port}"))
        with structlog.testing.capture_logs() as logs:
            assert await manager.run() == 1
        assert any(e["event"] == "cannot serve metrics and health probes" for e in logs)
    finally:
        await first.stop()


# -- the manager ------------------------------------------------------------------------


async def test_readyz_fails_until_informers_sync_then_shutdown_drains(
    sim: KubeSim, kube: KubeClient, http: aiohttp.ClientSession
) -> None:
    await kube.create(CONFIGMAPS, cm("one"), NS)
    sim.inject(verb="list", resource="configmaps", code=500)
    informer = quick_informer(kube, "mgr-cms")
    queue = WorkQueue("mgr-queue")
    reconciled: list[str] = []
    informer.add_handler(on_add=lambda obj: queue.add(object_key(obj)))

    async def reconcile(key: str) -> None:
        reconciled.append(key)

    closed: list[str] = []

    async def close() -> None:
        closed.append("client")

    manager = Manager("test", settings=local_settings())
    manager.add_controller(Controller("mgr-ctl", queue, reconcile, depends_on=[informer]))
    manager.add_closer("client", close)
    assert manager.informers == [informer], "dependencies are registered with the controller"
    run = await start_manager(manager)
    base = manager.observability.url

    async def reason_shown() -> bool:
        return "500 InternalError" in await reason(http, base, "informer mgr-cms")

    await eventually(reason_shown, what="readyz to name the list failure")
    status, body = await probe(http, f"{base}/readyz")
    assert status == 500 and "[-]informer mgr-cms failed: reason withheld" in body
    assert await reason(http, base, "informer mgr-cms") == (
        "internal server error: not synced: 500 InternalError: Internal error occurred: "
        "injected fault\n"
    )
    assert (await probe(http, f"{base}/livez"))[0] == 200
    sim.clear_faults()

    async def ready() -> bool:
        return (await probe(http, f"{base}/readyz"))[0] == 200

    await eventually(ready, what="readyz after the informer synced")

    async def reconciled_one() -> bool:
        return reconciled == [f"{NS}/one"]

    await eventually(reconciled_one)
    _, metrics = await probe(http, f"{base}/metrics")
    for needle in (
        'workqueue_adds_total{name="mgr-queue"}',
        'workqueue_work_duration_seconds_count{name="mgr-queue"}',
        'controller_runtime_reconcile_total{controller="mgr-ctl",result="success"} 1.0',
        'controller_runtime_reconcile_time_seconds_count{controller="mgr-ctl"}',
        'informer_relists_total{informer="mgr-cms"}',
        'informer_watch_reconnects_total{informer="mgr-cms"}',
        'informer_errors_total{code="500",informer="mgr-cms",verb="list"}',
    ):
        assert needle in metrics, needle
    manager.request_stop("test over")
    assert await asyncio.wait_for(run, 10) == 0
    assert closed == ["client"]
    assert manager.stopping


async def test_readyz_names_a_403_and_recovers_when_rbac_is_granted(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    async with KubeSim(enforce_rbac=True) as sim:
        bob_token = sim.add_user("bob")
        sim.write_kubeconfig(tmp_path / "admin", token=sim.admin_token)
        sim.write_kubeconfig(tmp_path / "bob", token=bob_token)
        admin = await KubeClient.from_kubeconfig(str(tmp_path / "admin"), qps=0)
        bob = await KubeClient.from_kubeconfig(str(tmp_path / "bob"), qps=0)
        await admin.create(NAMESPACES, {"metadata": {"name": NS}})
        manager = Manager("rbac", settings=local_settings())
        manager.add_informer(quick_informer(bob, "configmaps"))
        manager.add_closer("bob", bob.close)
        with structlog.testing.capture_logs() as logs:
            run = await start_manager(manager)
            base = manager.observability.url

            async def forbidden() -> bool:
                return "403" in await reason(http, base, "informer configmaps")

            await eventually(forbidden, what="readyz to show the 403")
        status, body = await probe(http, f"{base}/readyz")
        assert status == 500 and "[-]informer configmaps failed: reason withheld" in body
        body = await reason(http, base, "informer configmaps")
        assert body.startswith("internal server error: not synced: 403 Forbidden: ")
        assert 'User "bob" cannot list' in body
        assert any(
            e["event"] == "list failed, retrying" and "403 Forbidden" in e["error"] for e in logs
        ), "the failure is logged, not only shown in readyz"

        await admin.create(
            ROLES,
            {
                "metadata": {"name": "cm-reader", "namespace": NS},
                "rules": [
                    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "watch"]}
                ],
            },
            NS,
        )
        await admin.create(
            ROLE_BINDINGS,
            {
                "metadata": {"name": "bob-reads", "namespace": NS},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": "cm-reader",
                },
                "subjects": [
                    {"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"}
                ],
            },
            NS,
        )

        async def ready() -> bool:
            return (await probe(http, f"{base}/readyz"))[0] == 200

        await eventually(ready, what="readyz once bob may list")
        manager.request_stop()
        assert await asyncio.wait_for(run, 10) == 0
        await admin.close()


async def test_readyz_names_401_and_unreachable(
    sim: KubeSim, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    sim.write_kubeconfig(tmp_path / "expired", token="not-a-valid-token")
    expired = await KubeClient.from_kubeconfig(str(tmp_path / "expired"), qps=0)
    gone = KubeSim()
    await gone.start()
    gone.write_kubeconfig(tmp_path / "gone")
    await gone.stop()  # nothing listens on its port any more
    unreachable = await KubeClient.from_kubeconfig(str(tmp_path / "gone"), qps=0, timeout=2)
    manager = Manager("faults", settings=local_settings())
    manager.add_informer(quick_informer(expired, "with-expired-token"))
    manager.add_informer(quick_informer(unreachable, "without-apiserver"))
    manager.add_closer("expired", expired.close)
    manager.add_closer("unreachable", unreachable.close)
    run = await start_manager(manager)
    base = manager.observability.url

    async def both_reasons() -> bool:
        expired = await reason(http, base, "informer with-expired-token")
        gone = await reason(http, base, "informer without-apiserver")
        return "401 Unauthorized" in expired and "Unreachable" in gone

    await eventually(both_reasons, what="readyz to name both failures")
    assert (await probe(http, f"{base}/readyz"))[0] == 500
    assert (await reason(http, base, "informer with-expired-token")).startswith(
        "internal server error: not synced: 401 Unauthorized"
    )
    assert (await reason(http, base, "informer without-apiserver")).startswith(
        "internal server error: not synced: Unreachable: "
    )
    assert (await probe(http, f"{base}/livez"))[0] == 200, "retrying is not a liveness failure"
    manager.request_stop()
    assert await asyncio.wait_for(run, 10) == 0


async def test_invalid_kubeconfig_ends_with_a_clear_message(tmp_path: Path) -> None:
    bad = tmp_path / "kubeconfig"
    bad.write_text("this: [is not a kubeconfig\n")

    async def build() -> Manager:
        await KubeClient.from_kubeconfig(str(bad))
        raise AssertionError("unreachable")

    async def build_missing() -> Manager:
        await KubeClient.from_kubeconfig(str(tmp_path / "missing"))
        raise AssertionError("unreachable")

    with structlog.testing.capture_logs() as logs:
        assert await run_main(build) == 2
        assert await run_main(build_missing) == 2
    errors = [e for e in logs if e["event"] == "invalid kubeconfig"]
    assert len(errors) == 2 and all(e["error"] for e in errors)
    assert "missing" in errors[1]["error"]


async def test_standby_is_ready_without_informers_and_takes_over(
    kube: KubeClient, http: aiohttp.ClientSession
) -> None:
    def elector(identity: str) -> LeaderElector:
        return LeaderElector(
            kube,
            LeaderElectionSettings(
                lease_name="mgr-lock",
                namespace=NS,
                identity=identity,
                lease_duration=2.0,
                renew_deadline=1.5,
                retry_period=0.2,
            ),
        )

    first = Manager("first", settings=local_settings(), leader_elector=elector("first"))
    first_informer = first.add_informer(quick_informer(kube, "first-cms"))
    run_first = await start_manager(first)
    await asyncio.wait_for(first_informer.wait_synced(), 10)
    second = Manager("second", settings=local_settings(), leader_elector=elector("second"))
    second_informer = second.add_informer(quick_informer(kube, "second-cms"))
    run_second = await start_manager(second)

    async def second_standby() -> bool:
        return second.leader_elector is not None and second.leader_elector.state == "standby"

    await eventually(second_standby)
    status, body = await probe(http, f"{second.observability.url}/readyz?verbose")
    assert status == 200, body
    assert "[+]leader-election mgr-lock ok" in body
    assert not second_informer.has_synced(), "informers run only on the leader"
    assert (await probe(http, f"{first.observability.url}/readyz"))[0] == 200

    first.request_stop()
    assert await asyncio.wait_for(run_first, 10) == 0
    await asyncio.wait_for(second_informer.wait_synced(), 10)
    assert (await kube.get(LEASES, "mgr-lock", NS))["spec"]["holderIdentity"] == "second"
    second.request_stop()
    assert await asyncio.wait_for(run_second, 10) == 0
    released = (await kube.get(LEASES, "mgr-lock", NS))["spec"]
    assert released.get("holderIdentity", "") == "" and released["leaseDurationSeconds"] == 1


async def test_sigterm_drains_and_releases_the_lease(
    kube: KubeClient, http: aiohttp.ClientSession
) -> None:
    settings = LeaderElectionSettings(
        lease_name="sig-lock",
        namespace=NS,
        identity="sig",
        lease_duration=2.0,
        renew_deadline=1.5,
        retry_period=0.2,
    )
    queue = WorkQueue("sig-queue")
    started = asyncio.Event()
    release = asyncio.Event()
    finished: list[str] = []

    async def reconcile(key: str) -> None:
        started.set()
        await release.wait()
        finished.append(key)

    manager = Manager(
        "sig",
        settings=local_settings(handle_signals=True, shutdown_deadline=10),
        leader_elector=LeaderElector(kube, settings),
    )
    manager.add_controller(Controller("sig-ctl", queue, reconcile))
    run = await start_manager(manager)
    assert manager._signals, "signal handlers must be installed before we send one"
    queue.add("in-flight")
    await asyncio.wait_for(started.wait(), 10)
    os.kill(os.getpid(), signal.SIGTERM)

    async def not_ready() -> bool:
        status, body = await probe(http, f"{manager.observability.url}/readyz")
        return status == 500 and "[-]shutdown failed: reason withheld" in body

    await eventually(not_ready, what="readyz to fail during the drain")
    assert await reason(http, manager.observability.url, "shutdown") == (
        "internal server error: shutting down\n"
    )
    release.set()
    assert await asyncio.wait_for(run, 10) == 0
    assert finished == ["in-flight"], "the in-flight reconcile finished"
    spec = (await kube.get(LEASES, "sig-lock", NS))["spec"]
    assert spec.get("holderIdentity", "") == ""


async def test_lost_leadership_ends_the_run_with_an_error(sim: KubeSim, kube: KubeClient) -> None:
    settings = LeaderElectionSettings(
        lease_name="lost-lock",
        namespace=NS,
        identity="loser",
        lease_duration=2.0,
        renew_deadline=1.5,
        retry_period=0.2,
    )
    elector = LeaderElector(kube, settings)
    manager = Manager("lost", settings=local_settings(), leader_elector=elector)
    run = await start_manager(manager)
    await asyncio.wait_for(elector.wait_leading(), 10)
    sim.inject(verb="*", resource="leases", code=500)
    assert await asyncio.wait_for(run, 10) == 1
