"""Manifests the tests ship in works: one builder per kind instead of a literal per suite."""

from __future__ import annotations

from typing import Any


def configmap(name: str, namespace: str = "default", **data: str) -> dict[str, Any]:
    """A ConfigMap manifest (``data`` defaults to ``key: value``)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data or {"key": "value"},
    }


def deployment(
    name: str, namespace: str, *, container: str = "app", image: str = "nginx:1.27"
) -> dict[str, Any]:
    """A one-replica Deployment of one container, its pods labelled ``app: <name>``."""
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": container, "image": image}]},
            },
        },
    }
