"""Shared fixtures: an in-process kubesim, clients for it, and a kubectl runner."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client, config

from kubesim.sim import KubeSim

# No test may read the reference folder beside the repository (tests/readguard.py).
pytest_plugins = ["tests.readguard"]


@pytest.fixture
async def sim(tmp_path: Path) -> AsyncIterator[KubeSim]:
    """A running kubesim with its admin kubeconfig written to ``tmp_path``."""
    server = KubeSim()
    await server.start()
    server.write_kubeconfig(tmp_path / "kubeconfig")
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
async def api_client(sim: KubeSim, tmp_path: Path) -> AsyncIterator[client.ApiClient]:
    """A kubernetes_asyncio ApiClient configured from kubesim's kubeconfig."""
    cfg = client.Configuration()
    await config.load_kube_config(
        config_file=str(tmp_path / "kubeconfig"), client_configuration=cfg
    )
    api = client.ApiClient(cfg)
    try:
        yield api
    finally:
        await api.close()


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
