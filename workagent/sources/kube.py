"""The kube work source: ManifestWorks from the hub's API server (the default driver)."""

from __future__ import annotations

from ocmkit.kube import KubeClient, KubeConfigError
from workagent.settings import AgentSettings
from workagent.sources.base import WorkSource
from workagent.sources.config import read_yaml


def kubeconfig_server(path: str) -> str:
    """The ``server`` of the current context's cluster, exactly as the file writes it.

    The hub hash is taken from this string without any normalisation (a
    trailing slash changes it), so it is read from the YAML, not from the
    loaded client configuration. Raises KubeConfigError.
    """
    doc = read_yaml(path, "hub kubeconfig", KubeConfigError)
    if not isinstance(doc, dict):
        raise KubeConfigError(f"hub kubeconfig {path} is not a kubeconfig")
    current = doc.get("current-context")
    contexts = {c.get("name"): c.get("context") or {} for c in doc.get("contexts") or []}
    clusters = {c.get("name"): c.get("cluster") or {} for c in doc.get("clusters") or []}
    if not current or current not in contexts:
        raise KubeConfigError(f"hub kubeconfig {path}: no usable current-context")
    cluster = clusters.get(contexts[current].get("cluster"))
    server = cluster.get("server") if isinstance(cluster, dict) else None
    if not isinstance(server, str) or not server:
        raise KubeConfigError(f"hub kubeconfig {path}: the current context's cluster has no server")
    return server


async def kube_work_source(settings: AgentSettings) -> WorkSource:
    """The hub API server named by ``--workload-source-config`` (a kubeconfig)."""
    server = kubeconfig_server(settings.hub_kubeconfig)
    try:
        hub = await KubeClient.from_kubeconfig(
            settings.hub_kubeconfig,
            qps=settings.hub_kube_api_qps,
            burst=settings.hub_kube_api_burst,
            name="hub",
        )
    except KubeConfigError as err:
        raise KubeConfigError(f"hub: {err}") from err
    return WorkSource(driver="kube", client=hub, endpoint=server)
