"""The ``<component namespace>_build_info`` series library-go's programs export.

OCM's agent, hub manager and gRPC server each export one gauge, constant 1,
labelled with the version they were built from, named after their component
namespace (``--namespace``, else the pod's, else ``openshift-config-managed``)
with ``-`` replaced by ``_``: ``open_cluster_management_agent_build_info`` in a
Klusterlet's pod. Dashboards that track versions by it find ours too.
"""

from __future__ import annotations

import platform
import re
import sys
from typing import Final

import structlog
from prometheus_client import REGISTRY, CollectorRegistry, Gauge

log = structlog.get_logger(__name__)

LABELS: Final = (
    "major",
    "minor",
    "gitVersion",
    "gitCommit",
    "gitTreeState",
    "buildDate",
    "goVersion",
    "compiler",
    "platform",
)
_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
#: Go's names for the machines Python reports.
_GO_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "i686": "386", "armv7l": "arm"}
#: (metric name, registry) -> its gauge: one each, however often a program starts
_exported: dict[tuple[str, int], Gauge] = {}


def build_labels(version: str) -> dict[str, str]:
    """The label values for ``version`` (``0.1.0``): Go's version.Info fields, with
    what a Python build has (no commit, build date or Go version)."""
    parts = version.split(".")
    machine = platform.machine().lower()
    return {
        "major": parts[0] if parts[0].isdigit() else "",
        "minor": parts[1] if len(parts) > 1 and parts[1].isdigit() else "",
        "gitVersion": f"v{version}",
        "gitCommit": "",
        "gitTreeState": "",
        "buildDate": "",
        "goVersion": "",
        "compiler": platform.python_implementation().lower(),
        "platform": f"{sys.platform}/{_GO_ARCH.get(machine, machine)}",
    }


def export_build_info(
    namespace: str, component: str, version: str, registry: CollectorRegistry = REGISTRY
) -> str | None:
    """Export ``<namespace>_build_info`` = 1 for ``component`` at ``version``; its name.

    None (and a warning) when the namespace makes no valid metric name. Exporting
    the same name again only sets its labels again.
    """
    name = namespace.replace("-", "_") + "_build_info"
    if not _METRIC_NAME.fullmatch(name):
        log.warning("no build_info series: the namespace makes no metric name", namespace=namespace)
        return None
    gauge = _exported.get((name, id(registry)))
    if gauge is None:
        gauge = _exported[(name, id(registry))] = Gauge(
            name,
            "A metric with a constant '1' value labeled by major, minor, git version, git "
            "commit, git tree state, build date, Go version, and compiler from which "
            f"{component} was built, and platform on which it is running.",
            LABELS,
            registry=registry,
        )
    gauge.clear()
    gauge.labels(**build_labels(version)).set(1)
    return name
