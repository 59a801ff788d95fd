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
    name: str,
    namespace: str,
    *,
    container: str = "app",
    image: str = "nginx:1.27",
    replicas: Any = 1,
) -> dict[str, Any]:
    """A Deployment of ``replicas`` (any JSON, to test bad input) of one container, its
    pods labelled ``app: <name>``."""
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": container, "image": image}]},
            },
        },
    }


def manifest_config(
    group: str,
    resource: str,
    name: str,
    namespace: str = "default",
    *,
    feedback: list[dict[str, Any]] | None = None,
    rules: list[dict[str, Any]] | None = None,
    scrape: str | None = None,
    strategy: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One ``manifestConfigs`` entry of a work, for the object it identifies (the
    options left None are left out)."""
    options = {
        "feedbackRules": feedback,
        "conditionRules": rules,
        "feedbackScrapeType": scrape,
        "updateStrategy": strategy,
    }
    identifier = {"group": group, "resource": resource, "namespace": namespace, "name": name}
    return {
        "resourceIdentifier": identifier,
        **{key: value for key, value in options.items() if value is not None},
    }


def strategy(name: str, kind: str, **server_side_apply: Any) -> dict[str, Any]:
    """A manifestConfig giving ConfigMap ``default/<name>`` the update strategy ``kind``
    (``serverSideApply`` options when given)."""
    update: dict[str, Any] = {"type": kind}
    if server_side_apply:
        update["serverSideApply"] = server_side_apply
    return manifest_config("", "configmaps", name, strategy=update)


def json_paths(*paths: tuple[str, str] | tuple[str, str, str]) -> dict[str, Any]:
    """A JSONPaths feedback rule from (name, path[, version]) tuples."""
    entries = []
    for item in paths:
        entry = {"name": item[0], "path": item[1]}
        if len(item) == 3:
            entry["version"] = item[2]
        entries.append(entry)
    return {"type": "JSONPaths", "jsonPaths": entries}


def pi_job(name: str, namespace: str = "default", *, manual: bool = False) -> dict[str, Any]:
    """The docs' ``pi`` Job (``backoffLimit: 4``; no selector: the server generates one), with ``manualSelector`` and its own
    selector when ``manual``."""
    spec: dict[str, Any] = {
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "pi",
                        "image": "perl:5.34.0",
                        "command": ["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"],
                    }
                ],
                "restartPolicy": "Never",
            }
        },
        "backoffLimit": 4,
    }
    if manual:
        spec = {
            "manualSelector": True,
            "selector": {"matchLabels": {"job": name}},
            **spec,
        }
        spec["template"]["metadata"] = {"labels": {"job": name}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
