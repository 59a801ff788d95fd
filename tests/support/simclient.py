"""A test's own client of the ``sim`` fixture's kubesim, for the suites that test one layer."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from ocmkit.kube import KubeClient
from tests.support.programs import open_test_client


@contextlib.asynccontextmanager
async def sim_client(
    tmp_path: Path, user_agent: str, name: str, *namespaces: str
) -> AsyncIterator[KubeClient]:
    """An unthrottled client of the kubesim whose kubeconfig the ``sim`` fixture wrote in
    ``tmp_path``, with ``namespaces`` created; closed on exit."""
    client = await open_test_client(
        tmp_path / "kubeconfig", crds=(), user_agent=user_agent, name=name, namespaces=namespaces
    )
    async with client:
        yield client
