"""The two servers of every scenario: a fresh kubesim, and one real control plane."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest

from kubesim.sim import KubeSim
from tests.kubesim.truth import Side, tls_context
from tests.support.controlplane import ControlPlane
from tests.support.targets import PlanePool


@pytest.fixture(scope="package")
def real_plane(realkube_pool: PlanePool) -> Iterator[ControlPlane]:
    """One real control plane for every scenario (each uses names of its own)."""
    plane = realkube_pool.take()
    try:
        yield plane
    finally:
        realkube_pool.release(plane)


@pytest.fixture
async def sides(real_plane: ControlPlane, tmp_path: Path) -> AsyncIterator[tuple[Side, Side]]:
    """(kubesim, real): a fresh kubesim and the package's real control plane."""
    sim = KubeSim()
    await sim.start()
    connector = aiohttp.TCPConnector(ssl=tls_context(real_plane.ca_pem))
    try:
        async with aiohttp.ClientSession(connector=connector) as session:
            yield (
                Side(
                    "kubesim",
                    sim.url,
                    sim.admin_token,
                    session,
                    sim.write_kubeconfig(tmp_path / "kubesim.kubeconfig"),
                ),
                Side(
                    "real",
                    real_plane.url,
                    real_plane.admin_token,
                    session,
                    real_plane.write_kubeconfig(tmp_path / "real.kubeconfig"),
                ),
            )
    finally:
        await sim.stop()
