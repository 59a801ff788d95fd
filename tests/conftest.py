"""Shared fixtures: an in-process kubesim, clients for it, and a kubectl runner."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client, config

from kubesim.sim import KubeSim
from tests.support.targets import KUBESIM, REAL, Cluster, PlanePool, open_cluster, plane_pool

# No test may read the reference folder beside the repository (tests/readguard.py).
pytest_plugins = ["tests.readguard"]


def pytest_configure(config: pytest.Config) -> None:
    """The marks of the two targets."""
    config.addinivalue_line(
        "markers", "realkube: runs against a real control plane (built by `make realkube`)"
    )
    config.addinivalue_line(
        "markers",
        "kubesim_only(reason): runs on kubesim only; the reason says what of kubesim it needs",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every test that uses ``target`` on kubesim and on the real control plane."""
    if "target" not in metafunc.fixturenames:
        return
    only = metafunc.definition.get_closest_marker("kubesim_only")
    if only is not None and not (only.args and str(only.args[0]).strip()):
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: kubesim_only needs a reason")
    params = [pytest.param(KUBESIM, id=KUBESIM)]
    if only is None:
        params.append(pytest.param(REAL, id=REAL, marks=pytest.mark.realkube))
    metafunc.parametrize("target", params, indirect=True)


@pytest.fixture
def target(request: pytest.FixtureRequest) -> str:
    """``kubesim`` or ``real`` (parametrized by :func:`pytest_generate_tests`)."""
    return str(getattr(request, "param", KUBESIM))


@pytest.fixture(scope="session")
def realkube_pool() -> Iterator[PlanePool]:
    """The real control planes of this run: one etcd, fresh API servers per test."""
    with plane_pool() as pool:
        yield pool


def pool_for(request: pytest.FixtureRequest, target: str) -> PlanePool | None:
    """The session's control-plane pool when ``target`` is real (started on first use)."""
    if target != REAL:
        return None
    pool = request.getfixturevalue("realkube_pool")
    assert isinstance(pool, PlanePool)
    return pool


@pytest.fixture
async def cluster(
    target: str, request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Cluster]:
    """One cluster of ``target``, its admin kubeconfig written to ``tmp_path/kubeconfig``."""
    async with open_cluster(target, pool_for(request, target)) as running:
        running.write_kubeconfig(tmp_path / "kubeconfig")
        yield running


@pytest.fixture
async def sim(tmp_path: Path) -> AsyncIterator[KubeSim]:
    """A running kubesim with its admin kubeconfig written to ``tmp_path``."""
    async with KubeSim() as server:
        server.write_kubeconfig(tmp_path / "kubeconfig")
        yield server


@pytest.fixture
async def api_client(sim: KubeSim, tmp_path: Path) -> AsyncIterator[client.ApiClient]:
    """A kubernetes_asyncio ApiClient configured from kubesim's kubeconfig."""
    cfg = client.Configuration()
    await config.load_kube_config(
        config_file=str(tmp_path / "kubeconfig"), client_configuration=cfg
    )
    async with client.ApiClient(cfg) as api:
        yield api


@dataclass
class Raw:
    """Plain HTTP access to kubesim, for checking exact codes and bodies."""

    session: aiohttp.ClientSession
    base: str
    token: str

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        """Send one request; returns (status, decoded JSON body or text)."""
        hdrs = {"Authorization": f"Bearer {self.token}", "Content-Type": content_type}
        hdrs.update(headers or {})
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        async with self.session.request(method, self.base + path, data=data, headers=hdrs) as r:
            text = await r.text()
            try:
                return r.status, json.loads(text)
            except ValueError:
                return r.status, text


@pytest.fixture
async def raw(sim: KubeSim) -> AsyncIterator[Raw]:
    """A Raw HTTP helper bound to the admin token."""
    async with aiohttp.ClientSession() as session:
        yield Raw(session, sim.url, sim.admin_token)


@dataclass
class Kubectl:
    """Runs the real kubectl binary against kubesim."""

    kubeconfig: Path

    async def __call__(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, KUBECONFIG=str(self.kubeconfig), HOME=str(self.kubeconfig.parent))
        proc = await asyncio.create_subprocess_exec(
            "kubectl",
            *args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        out, err = await asyncio.wait_for(
            proc.communicate(stdin.encode() if stdin is not None else None), timeout=60
        )
        result = subprocess.CompletedProcess(
            ["kubectl", *args], proc.returncode or 0, out.decode(), err.decode()
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}"
            )
        return result


@pytest.fixture
def kubectl(sim: KubeSim, tmp_path: Path) -> Kubectl:
    """A kubectl runner for the ``sim`` fixture (fails the test if kubectl is missing)."""
    if shutil.which("kubectl") is None:
        pytest.fail("the kubectl binary is required for these tests and is not on PATH")
    return Kubectl(tmp_path / "kubeconfig")


async def eventually(
    check: Callable[[], Awaitable[bool]], *, timeout: float = 30.0, what: str = "condition"
) -> None:
    """Wait until ``check()`` is true, polling with a deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        if await check():
            return
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.02)  # sleep-ok: polling with a deadline
